// examples/hello-world.yaml as a Go program, through the component package in components/
// (docs/multilanguage.md):
//
//	pulumi package add ../../components   # generates sdks/minicluster, adds its replace to go.mod
//	go mod tidy
//	pulumi stack init dev
//	flux keygen hello.cert && pulumi config set --secret curveCert -- "$(cat hello.cert)"
//	pulumi up
package main

import "github.com/pulumi/pulumi/sdk/v3/go/pulumi"

func main() {
	pulumi.Run(helloWorld)
}
