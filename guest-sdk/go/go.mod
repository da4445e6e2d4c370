module kubewasm.dev/sdk

go 1.24
