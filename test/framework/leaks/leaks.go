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

// Package leaks looks for secret material where it must never be: in the lines the manager logs
// and in the events it writes. testenv.Run does it after a suite that asks for it
// (Suite.LeakCheck), with the secrets the suite made.
package leaks

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
)

// Log keeps every line a logger writes into it (the manager's, at every verbosity), for Find.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// tokenInData finds the join token in rendered data; its second group is the secret half.
var tokenInData = regexp.MustCompile(`\b([a-z0-9]{6})\.([a-z0-9]{16})\b`)

// renderedValueMarker appears in every rendered config and nowhere else: a file's data URL.
const renderedValueMarker = `"contents":{"source":"data:`

// Find looks, in logs and in every event c lists, for the secret material that exists now: the
// secret half of every join token (in the workload cluster and in data Secrets), the body of
// every private key of the cluster certificate Secrets, and rendered data. It returns what it
// found, described without the secret itself, and how many secrets it looked for (rendered data
// counts as one): a run that made too few proves nothing, which is for the caller to judge.
func Find(ctx context.Context, c client.Reader, logs string) (leaks []string, looked int, err error) {
	type needle struct{ what, value string }
	var needles []needle
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets); err != nil {
		return nil, 0, fmt.Errorf("listing Secrets: %w", err)
	}
	for _, s := range secrets.Items {
		switch {
		case s.Type == bootstrapapi.SecretTypeBootstrapToken:
			needles = append(needles, needle{"join token secret of " + s.Name, string(s.Data[bootstrapapi.BootstrapTokenSecretKey])})
		case s.Type == clusterv1.ClusterSecretType && len(s.Data[secret.TLSKeyDataName]) > 0:
			// The first line of the key's base64 body is unique to it.
			lines := strings.Split(string(s.Data[secret.TLSKeyDataName]), "\n")
			if len(lines) > 1 && len(lines[1]) >= 32 {
				needles = append(needles, needle{"private key of Secret " + s.Namespace + "/" + s.Name, lines[1]})
			}
		case s.Type == clusterv1.ClusterSecretType && string(s.Data["format"]) == "ignition":
			// Contents may be gzipped and the config wrapped: read the files as a node would.
			// Secrets some tests plant are not Ignition at all: those are searched as they are.
			text := string(s.Data["value"])
			if files, err := ignition.ReadFiles(s.Data["value"]); err == nil {
				text = string(files[ignition.KubeadmConfigPath])
			}
			for _, m := range tokenInData.FindAllStringSubmatch(text, -1) {
				needles = append(needles, needle{"join token in data Secret " + s.Namespace + "/" + s.Name, m[2]})
			}
		}
	}
	needles = append(needles, needle{"rendered data", renderedValueMarker})

	events := &eventsv1.EventList{}
	if err := c.List(ctx, events); err != nil {
		return nil, 0, fmt.Errorf("listing events: %w", err)
	}
	var notes strings.Builder
	for _, e := range events.Items {
		notes.WriteString(e.Note)
		notes.WriteByte('\n')
	}
	coreEvents := &corev1.EventList{}
	if err := c.List(ctx, coreEvents, &client.ListOptions{Namespace: metav1.NamespaceAll}); err != nil {
		return nil, 0, fmt.Errorf("listing core events: %w", err)
	}
	for _, e := range coreEvents.Items {
		notes.WriteString(e.Message)
		notes.WriteByte('\n')
	}

	for _, n := range needles {
		if n.value == "" {
			continue
		}
		if strings.Contains(logs, n.value) {
			leaks = append(leaks, n.what+" appears in the manager's log")
		}
		if strings.Contains(notes.String(), n.value) {
			leaks = append(leaks, n.what+" appears in an event")
		}
	}
	return leaks, len(needles), nil
}
