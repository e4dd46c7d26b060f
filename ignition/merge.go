package ignition

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coreos/ignition/v2/config/merge"
	v3_0 "github.com/coreos/ignition/v2/config/v3_0"
	t3_0 "github.com/coreos/ignition/v2/config/v3_0/types"
	v3_1 "github.com/coreos/ignition/v2/config/v3_1"
	t3_1 "github.com/coreos/ignition/v2/config/v3_1/types"
	v3_2 "github.com/coreos/ignition/v2/config/v3_2"
	t3_2 "github.com/coreos/ignition/v2/config/v3_2/types"
	v3_3 "github.com/coreos/ignition/v2/config/v3_3"
	t3_3 "github.com/coreos/ignition/v2/config/v3_3/types"
	v3_4 "github.com/coreos/ignition/v2/config/v3_4"
	t3_4 "github.com/coreos/ignition/v2/config/v3_4/types"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	t3_5 "github.com/coreos/ignition/v2/config/v3_5/types"
	v3_6 "github.com/coreos/ignition/v2/config/v3_6"
	t3_6 "github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/vcontext/report"
)

// mergeFunc parses the base and the snippet (nil for none) at one spec version, merges the
// snippet over the base and returns the validated result as JSON.
type mergeFunc func(base, snippet []byte) ([]byte, *Error)

// mergers maps every spec version the provider emits to its merge. Each version's
// ParseCompatibleVersion accepts that version and all older ones and translates them up, which
// is how the 3.0.0 base and a snippet of any lower version reach the target version. The second
// argument lists the file modes of a config, for defaultModes.
var mergers = map[string]mergeFunc{
	"3.0.0": mergeAt(v3_0.ParseCompatibleVersion, func(c *t3_0.Config) (m []**int) {
		for i := range c.Storage.Files {
			m = append(m, &c.Storage.Files[i].Mode)
		}
		return m
	}),
	"3.1.0": mergeAt(v3_1.ParseCompatibleVersion, func(c *t3_1.Config) (m []**int) {
		for i := range c.Storage.Files {
			m = append(m, &c.Storage.Files[i].Mode)
		}
		return m
	}),
	"3.2.0": mergeAt(v3_2.ParseCompatibleVersion, func(c *t3_2.Config) (m []**int) {
		for i := range c.Storage.Files {
			m = append(m, &c.Storage.Files[i].Mode)
		}
		return m
	}),
	"3.3.0": mergeAt(v3_3.ParseCompatibleVersion, func(c *t3_3.Config) (m []**int) {
		for i := range c.Storage.Files {
			m = append(m, &c.Storage.Files[i].Mode)
		}
		return m
	}),
	"3.4.0": mergeAt(v3_4.ParseCompatibleVersion, func(c *t3_4.Config) (m []**int) {
		for i := range c.Storage.Files {
			m = append(m, &c.Storage.Files[i].Mode)
		}
		return m
	}),
	"3.5.0": mergeAt(v3_5.ParseCompatibleVersion, func(c *t3_5.Config) (m []**int) {
		for i := range c.Storage.Files {
			m = append(m, &c.Storage.Files[i].Mode)
		}
		return m
	}),
	"3.6.0": mergeAt(v3_6.ParseCompatibleVersion, func(c *t3_6.Config) (m []**int) {
		for i := range c.Storage.Files {
			m = append(m, &c.Storage.Files[i].Mode)
		}
		return m
	}),
}

// mergeAt builds the mergeFunc of one spec version from its parser and its file-mode lister;
// C is that version's Config.
func mergeAt[C any](parse func([]byte) (C, report.Report, error), fileModes func(*C) []**int) mergeFunc {
	return func(base, snippet []byte) ([]byte, *Error) {
		merged, rpt, err := parse(base)
		if err != nil {
			return nil, reportError(ErrInvalidInput, "", "the bootstrap configuration is not valid Ignition", err, rpt)
		}
		if snippet != nil {
			child, rpt, err := parse(snippet)
			if err != nil {
				return nil, reportError(ErrInvalidButane, butaneField, "the Butane snippet's Ignition does not parse", err, rpt)
			}
			// The snippet is the child: for an entry both define, its fields win. Owned paths
			// and units were rejected before, so this only ever adds to the base.
			result, _ := merge.MergeStructTranscribe(merged, child)
			merged = result.(C)
		}
		defaultModes(fileModes(&merged))
		out, err := json.Marshal(merged)
		if err != nil {
			return nil, errorf(ErrInvalidInput, "", "cannot encode the merged config: %v", err)
		}
		if out, err = pruneEmpty(out); err != nil {
			return nil, errorf(ErrInvalidInput, "", "cannot encode the merged config: %v", err)
		}
		// Parse what is emitted, exactly as a node would: this validates the merged config
		// (duplicates, conflicts between base and snippet) with the target version's rules.
		if _, rpt, err := parse(out); err != nil {
			return nil, reportError(ErrInvalidInput, "", "the merged configuration is not valid Ignition", err, rpt)
		}
		return out, nil
	}
}

// defaultModes gives every file without a mode Ignition's default, 0644, explicitly: CAPD
// dereferences the mode of every file it writes. Only snippet files can lack one.
func defaultModes(modes []**int) {
	for _, m := range modes {
		if *m == nil {
			*m = ptr(defaultFileMode)
		}
	}
}

// mergeConfigs merges at the target version, which targetIgnitionVersion took from the tables.
func mergeConfigs(target string, base, snippet []byte) ([]byte, *Error) {
	m, ok := mergers[target]
	if !ok {
		return nil, errorf(ErrUnsupportedIgnitionVersion, "ignitionVersion", "no Ignition %s support", target)
	}
	return m(base, snippet)
}

// reportError turns a failed Ignition parse into an *Error that carries the report's text.
func reportError(kind ErrorKind, field, what string, err error, rpt report.Report) *Error {
	msg := fmt.Sprintf("%s: %v", what, err)
	if text := strings.TrimSpace(rpt.String()); text != "" {
		msg += ": " + strings.ReplaceAll(text, "\n", "; ")
	}
	return &Error{Kind: kind, Field: field, Message: msg}
}
