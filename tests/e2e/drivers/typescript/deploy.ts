// The e2e driver of examples/typescript: `pulumi up` or `pulumi destroy` of the example's own
// program through @pulumi/pulumi's Automation API.
//
// pulumi-language-nodejs is refused by the Go module proxy, so the CLI cannot start a Node
// program itself. An inline program needs no language host: this process serves the language
// runtime and the real CLI runs `pulumi up --client=<its address>`. The program is the example's
// index.ts, compiled, imported inside the inline program; its exports are the stack's outputs.
//
//   node deploy.js up|destroy <project dir> <stack> <compiled example module>
//
// The project dir holds the example's Pulumi.yaml (its `packages:` entry names the component
// package) and the stack's config. Prints one line `RESULT <json>` with the outputs.
import { LocalWorkspace } from "@pulumi/pulumi/automation";

async function main(argv: string[]): Promise<void> {
    const [verb, workDir, stackName, programModule] = argv;
    if (!["up", "destroy"].includes(verb) || !programModule) {
        throw new Error("usage: deploy.js up|destroy <project dir> <stack> <compiled module>");
    }
    const stack = await LocalWorkspace.createOrSelectStack(
        {
            stackName,
            projectName: "minicluster-typescript",
            program: async () => ({ ...(await import(programModule)) }),
        },
        { workDir },
    );
    const onOutput = (out: string) => process.stderr.write(out);
    if (verb === "up") {
        const result = await stack.up({ onOutput });
        const outputs: Record<string, unknown> = {};
        const secrets: string[] = [];
        for (const [key, output] of Object.entries(result.outputs)) {
            outputs[key] = output.value;
            if (output.secret) {
                secrets.push(key);
            }
        }
        const summary = result.summary;
        console.log("RESULT " + JSON.stringify({ result: summary.result, outputs, secrets }));
    } else {
        const result = await stack.destroy({ onOutput });
        console.log("RESULT " + JSON.stringify({ result: result.summary.result }));
    }
}

main(process.argv.slice(2)).catch((err) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
});
