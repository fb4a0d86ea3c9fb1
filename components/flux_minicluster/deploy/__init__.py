"""The Pulumi layer, in three rooms: ``component`` (the MiniCluster component and what it
registers: keygen Command, awaits, burst groups, queue patches, outputs), ``offline`` (a Pulumi
runtime without an engine: the recorder of registrations and the SDK internals it reads), and
``stack`` (the stack program: config, project, and its offline rendering) on top of both. The
component never imports the offline runtime, nor the runtime the component: ``.importlinter``
holds it."""
