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

// Package forger is the real-node suite's caller that is not Cluster API: its command (cmd/),
// run in a Pod of a management cluster, POSTs a request body to a URL over HTTPS, as anyone on
// the cluster network can, and prints what came back as one JSON Result. It presents no client
// certificate and does not check who serves: what is tested is what the server does with such a
// caller. The suite packs the command into an image of its own and decodes the Pod's log.
package forger

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The command's environment.
const (
	URLEnv  = "FORGER_URL"
	BodyEnv = "FORGER_BODY"
)

// Result is what the command prints: the HTTP status and body of the answer, or why there was
// none (a refused TLS handshake, a refused connection, ...).
type Result struct {
	Status int    `json:"status,omitempty"`
	Body   string `json:"body,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Post sends body to url and says what came back.
func Post(url string, body []byte) Result {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see the package comment
	}}
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return Result{Error: err.Error()}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return Result{Error: fmt.Sprintf("reading the answer: %v", err)}
	}
	return Result{Status: resp.StatusCode, Body: string(answer)}
}
