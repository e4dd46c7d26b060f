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

// Package benchresults keeps the real-node suite's timings in bench/results.md, between two
// markers, so that `make bench-e2e` writes that section alone and `make bench`, which rewrites
// the rest of the file, keeps it.
package benchresults

import (
	"fmt"
	"strings"
)

// The markers around the real-node section.
const (
	Begin = "<!-- e2e timings: begin -->"
	End   = "<!-- e2e timings: end -->"
)

// Replace puts body between the markers of text; text without them gets the section at its end.
func Replace(text, body string) string {
	section := Begin + "\n" + strings.TrimRight(body, "\n") + "\n" + End
	begin, end := strings.Index(text, Begin), strings.Index(text, End)
	if begin < 0 || end < begin {
		return strings.TrimRight(text, "\n") + "\n\n" + section + "\n"
	}
	return text[:begin] + section + text[end+len(End):]
}

// Section is the body between the markers of text, and whether there is one.
func Section(text string) (string, bool) {
	begin, end := strings.Index(text, Begin), strings.Index(text, End)
	if begin < 0 || end < begin {
		return "", false
	}
	return strings.Trim(text[begin+len(Begin):end], "\n"), true
}

// Keep carries the section of old over into report (a newly written file without it).
func Keep(old, report string) string {
	body, ok := Section(old)
	if !ok {
		return report
	}
	return Replace(report, body)
}

// Heading is the section's heading and the line that says where its figures come from.
func Heading(date, machine, kubernetesVersion string) string {
	return fmt.Sprintf("## Real nodes (`make bench-e2e`)\n\nMeasured %s on %s with Kubernetes %s: seconds from each Machine's creation to its data Secret, the node's boot, `kubeadm join`'s exit and the nodeRef (first seen by the suite, polling each second). Both flavors run side by side, so their nodes boot at the same time. A figure, not an assertion.\n",
		date, machine, kubernetesVersion)
}
