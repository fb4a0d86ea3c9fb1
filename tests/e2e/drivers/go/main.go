// The e2e driver of examples/go: `pulumi up` or `pulumi destroy` of the example's own program
// (helloWorld, in the example's minicluster.go, compiled into this binary in place of its
// main.go) through the Go SDK's Automation API.
//
// pulumi-language-go is refused by the Go module proxy, so the CLI cannot start a Go program
// itself. An inline program needs no language host: this process serves the language runtime
// and the real CLI runs `pulumi up --client=<its address>`.
//
//	driver up|destroy <project dir> <stack>
//
// The project dir holds the example's Pulumi.yaml (its `packages:` entry names the component
// package) and the stack's config. Prints one line `RESULT <json>` with the outputs.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
)

func run(verb, workDir, stackName string) (map[string]any, error) {
	ctx := context.Background()
	stack, err := auto.UpsertStackInlineSource(
		ctx, stackName, "minicluster-go", helloWorld, auto.WorkDir(workDir))
	if err != nil {
		return nil, err
	}
	switch verb {
	case "up":
		res, err := stack.Up(ctx, optup.ProgressStreams(os.Stderr))
		if err != nil {
			return nil, err
		}
		outputs := map[string]any{}
		secrets := []string{}
		for key, output := range res.Outputs {
			outputs[key] = output.Value
			if output.Secret {
				secrets = append(secrets, key)
			}
		}
		return map[string]any{
			"result": res.Summary.Result, "outputs": outputs, "secrets": secrets,
		}, nil
	case "destroy":
		res, err := stack.Destroy(ctx, optdestroy.ProgressStreams(os.Stderr))
		if err != nil {
			return nil, err
		}
		return map[string]any{"result": res.Summary.Result}, nil
	}
	return nil, fmt.Errorf("unknown verb %q (up, destroy)", verb)
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: driver up|destroy <project dir> <stack>")
		os.Exit(2)
	}
	result, err := run(os.Args[1], os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	line, err := json.Marshal(result)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("RESULT %s\n", line)
}
