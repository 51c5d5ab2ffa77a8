module tokenvault.dev/client

go 1.19
