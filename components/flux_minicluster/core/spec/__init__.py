"""The MiniCluster as the product models it.

The Flux Operator's v1alpha2 spec as pydantic models (``models``), the older v1alpha1 document
converted into them (``v1alpha1``), and the validated MiniCluster the rest of the core receives:
name, namespace, spec and the names of its objects (``definition``).
"""
