// Command forger: package forger's caller, FORGER_URL and FORGER_BODY from its environment.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/forger"
)

func main() {
	r := forger.Post(os.Getenv(forger.URLEnv), []byte(os.Getenv(forger.BodyEnv)))
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, "forger:", err)
		os.Exit(1)
	}
}
