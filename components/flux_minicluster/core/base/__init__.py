"""The foundation every other part of the core stands on; it imports none of them.

The one error type (``errors``), the scripts' configuration exit codes (``exitcodes``), where
things live in a pod (``layout``), stand-ins for values not known yet (``placeholders``), the one
Jinja2 environment (``templating``) and plain JSON values back from Pulumi or YAML
(``jsonvalues``). Each is independent of the others, so any part may use any of them.
"""
