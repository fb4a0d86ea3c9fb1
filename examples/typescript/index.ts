// examples/hello-world.yaml as a TypeScript program, through the component package in
// components/ (docs/multilanguage.md):
//
//   pulumi package add ../../components   # generates sdks/minicluster, links @pulumi/minicluster
//   npm install
//   pulumi stack init dev
//   flux keygen hello.cert && pulumi config set --secret curveCert -- "$(cat hello.cert)"
//   pulumi up
import * as pulumi from "@pulumi/pulumi";
import * as minicluster from "@pulumi/minicluster";

const config = new pulumi.Config();

const hello = new minicluster.MiniCluster("hello", {
    // examples/hello-world.yaml, inline (any MiniCluster document, or a bare spec).
    spec: {
        apiVersion: "flux-framework.org/v1alpha2",
        kind: "MiniCluster",
        metadata: { name: "flux-hello", namespace: "minicluster-examples" },
        spec: {
            size: 4,
            tasks: 4,
            logging: { quiet: true },
            containers: [
                {
                    image: "ubuntu:24.04",
                    command: "echo hello world",
                    resources: { requests: { cpu: "250m", memory: "256Mi" } },
                },
            ],
        },
    },
    // A certificate of your own, kept secret; without one the component runs `flux keygen`.
    curveCert: config.getSecret("curveCert"),
    wait: minicluster.Wait.NONE,
});

export const jobName = hello.jobName;
export const serviceName = hello.serviceName;
export const namespace = hello.namespace;
export const leadBrokerHost = hello.leadBrokerHost;
export const hostlist = hello.hostlist;
export const size = hello.size;
export const maxSize = hello.maxSize;
export const curvePublicKey = hello.curvePublicKey;
