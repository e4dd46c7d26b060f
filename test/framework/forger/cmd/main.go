/*
Copyright The cabpi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
