// Command chat is the README's model program: it loads the model file
// named by its argument and prints the model's answer to a question,
// through the file's chat template.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/chat"
	_ "github.com/go-ggml/ggml/model/gemma" // the architectures it runs
	_ "github.com/go-ggml/ggml/model/llama"
	_ "github.com/go-ggml/ggml/model/qwen3"
)

func main() {
	ctx := context.Background()
	m, err := model.Load(ctx, os.Args[1], model.Options{}) // all layers on the GPU if there is one
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	msgs := []chat.Message{{Role: "user", Content: "Why is the sky blue?"}}
	for piece, err := range m.Chat(ctx, msgs, model.GenerateOptions{MaxTokens: 128}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(piece)
	}
	fmt.Println()
}
