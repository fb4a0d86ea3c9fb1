"""The pure core: from a user's spec to Kubernetes objects. Never imports Pulumi.

Its parts are subpackages, each importing only those below it (``.importlinter``'s
``core-layers`` contract holds the order, one contract per subpackage holds its inside):

* ``render``: the plan as Kubernetes objects, scripts and configs;
* ``planning``: every fact of a MiniCluster derived once (``plan``), an elastic one's bounds;
* ``reading``: what users write (YAML, documents, files) into validated definitions;
* ``validation``: pydantic's errors as readable problems, and the cross-field rules;
* ``spec``: the pydantic models, the v1alpha1 conversion, the validated definition;
  ``deployed``: a deployed MiniCluster's stack outputs and live status;
* ``flux``: Flux's own formats (hostlists, broker config, CURVE certificate, secrets);
  ``kube``: the rules of the Kubernetes API a MiniCluster must keep (names, labels, limits,
  quantities, pod rules, release features, Job completion, Kueue);
* ``base``: the foundation (errors, exit codes, paths in the pod, placeholders, templating,
  JSON values); ``inpod``: what runs inside the pods, standard library only.

``keygen`` stays a module here, not in ``flux``: ``python -m flux_minicluster.core.keygen`` is a
published command (the keygen Command's script runs it, and the component's schema names it),
and a new path would change every deployed keygen Command.
"""
