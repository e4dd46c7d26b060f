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

package controllers

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of what a message may weigh where a user reads it. The CRD caps a condition message at
// 32 KiB, and a status patch carrying a longer one fails whole (the user then sees stale
// conditions); several conditions share the status. The events API rejects a note over 1 KiB.
const (
	maxConditionMessage = 8 * 1024
	maxEventNote        = 1024
)

// messageEntrySeparator joins the entries of a report (Butane's, Ignition's) in a message.
const messageEntrySeparator = "; "

// bounded returns message cut to at most limit bytes. It keeps whole report entries where it
// can and says how many it left out ("… and 12 more"); a single entry too long is cut at a rune
// boundary ("… and 3000 more bytes").
func bounded(message string, limit int) string {
	if len(message) <= limit {
		return message
	}
	entries := strings.Split(message, messageEntrySeparator)
	kept := 0
	size := 0
	for i, e := range entries {
		add := len(e)
		if i > 0 {
			add += len(messageEntrySeparator)
		}
		// Room for the suffix, whose count has at most as many digits as len(entries).
		if size+add+len(fmt.Sprintf("… and %d more", len(entries))) > limit {
			break
		}
		size += add
		kept++
	}
	if kept > 0 {
		return strings.Join(entries[:kept], messageEntrySeparator) + fmt.Sprintf("%s… and %d more", messageEntrySeparator, len(entries)-kept)
	}
	suffix := fmt.Sprintf("… and %d more bytes", len(message))
	cut := max(limit-len(suffix), 0)
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + fmt.Sprintf("… and %d more bytes", len(message)-cut)
}
