module kubewasm.dev/plugins/demo-application-go

go 1.24

require kubewasm.dev/sdk v0.0.0

replace kubewasm.dev/sdk => ../../guest-sdk/go
