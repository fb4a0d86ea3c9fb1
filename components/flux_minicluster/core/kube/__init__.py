"""The rules of the Kubernetes API a MiniCluster must keep, written once.

Name syntax (``names``), labels and annotations (``labels``), the API server's limits
(``limits``), resource quantities (``quantity``), pod rules (``podrules``), the release a
rendering targets (``kubeversion``), how the Job completes (``completion``) and Kueue
(``queueing``). Spec validation, the renderer, the policy rules and ``kubecheck`` all read them
here, so the offline checks and the API server agree. They know nothing of the spec model.
"""
