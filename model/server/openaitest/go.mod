module github.com/go-ggml/ggml/model/server/openaitest

go 1.26.0

require (
	github.com/go-ggml/ggml v0.0.0
	github.com/openai/openai-go/v3 v3.98.0
	github.com/stretchr/testify v1.10.0
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/ollama/ollama v0.17.4 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/go-ggml/ggml => ../../..
