// Our own main for pulumi-resource-kubernetes. Upstream's cmd/pulumi-resource-kubernetes embeds
// schema-embed.json and terraform-mapping-embed.json, which are generated (git-ignored) and so
// missing from the module zip; build.py writes both beside this file in the generated wrapper
// module, from the module's committed schema.json and terraform-mapping.json, at build time.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
