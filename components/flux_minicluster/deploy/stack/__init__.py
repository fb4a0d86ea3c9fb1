"""The stack program (``pulumi up -s <stack>``): stack config read and settled once, the
project's stacks, and the same program rendered offline."""
