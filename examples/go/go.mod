module example.com/minicluster-go

go 1.25

require (
	example.com/pulumi-minicluster/sdk/go v0.0.0-00010101000000-000000000000
	github.com/pulumi/pulumi/sdk/v3 v3.259.0
)

// Written by `pulumi package add ../../components`: the SDK it generates into sdks/minicluster.
replace example.com/pulumi-minicluster/sdk/go => ./sdks/minicluster
