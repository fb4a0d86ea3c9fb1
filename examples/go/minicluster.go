package main

import (
	"example.com/pulumi-minicluster/sdk/go/minicluster"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

// helloWorld declares the MiniCluster of examples/hello-world.yaml and exports its outputs.
func helloWorld(ctx *pulumi.Context) error {
	wait := minicluster.WaitNONE
	args := &minicluster.MiniClusterArgs{
		// examples/hello-world.yaml, inline (any MiniCluster document, or a bare spec).
		Spec: map[string]any{
			"apiVersion": "flux-framework.org/v1alpha2",
			"kind":       "MiniCluster",
			"metadata":   map[string]any{"name": "flux-hello", "namespace": "minicluster-examples"},
			"spec": map[string]any{
				"size":    4,
				"tasks":   4,
				"logging": map[string]any{"quiet": true},
				"containers": []any{
					map[string]any{
						"image":   "ubuntu:24.04",
						"command": "echo hello world",
						"resources": map[string]any{
							"requests": map[string]any{"cpu": "250m", "memory": "256Mi"},
						},
					},
				},
			},
		},
		Wait: &wait,
	}
	// A certificate of your own, kept secret; without one the component runs `flux keygen`.
	if cert, err := config.New(ctx, "").TrySecret("curveCert"); err == nil {
		args.CurveCert = cert
	}
	hello, err := minicluster.NewMiniCluster(ctx, "hello", args)
	if err != nil {
		return err
	}
	ctx.Export("jobName", hello.JobName)
	ctx.Export("serviceName", hello.ServiceName)
	ctx.Export("namespace", hello.Namespace)
	ctx.Export("leadBrokerHost", hello.LeadBrokerHost)
	ctx.Export("hostlist", hello.Hostlist)
	ctx.Export("size", hello.Size)
	ctx.Export("maxSize", hello.MaxSize)
	ctx.Export("curvePublicKey", hello.CurvePublicKey)
	return nil
}
