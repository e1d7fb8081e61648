// Command hello prints a greeting.
package main

import (
	"fmt"
	"os"

	"example.com/hello/greet"
)

func main() {
	name := ""
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	fmt.Println(greet.Hello(name))
}
