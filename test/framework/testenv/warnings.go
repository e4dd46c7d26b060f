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

package testenv

import (
	"context"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WarningRecorder keeps the warnings the API server sent a client (admission warnings), in
// order, as kubectl prints them.
type WarningRecorder struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (w *WarningRecorder) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// Take returns the warnings received since the last Take and forgets them.
func (w *WarningRecorder) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// ClientWithWarnings is a client of the environment's API server (admin) whose warnings go to
// the returned recorder.
func (e *Environment) ClientWithWarnings() (client.Client, *WarningRecorder, error) {
	rec := &WarningRecorder{}
	cfg := rest.CopyConfig(e.Config)
	cfg.WarningHandler, cfg.WarningHandlerWithContext = nil, rec
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	return c, rec, err
}
