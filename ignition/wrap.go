package ignition

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

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

// wrapFunc builds the wrapper of one spec version: a config whose ignition.config.replace is
// source, gzip-compressed, and nothing else.
type wrapFunc func(source string) ([]byte, error)

// wrappers maps the spec versions that can wrap to their wrapFunc. A config reference has a
// compression field from spec 3.1.0; a 3.0.0 config is never wrapped. The wrapper has the
// config's own version, so a node that reads the config reads the wrapper.
var wrappers = map[string]wrapFunc{
	"3.1.0": wrapAt(v3_1.Parse, func(r *string) t3_1.Config {
		return t3_1.Config{Ignition: t3_1.Ignition{Version: "3.1.0", Config: t3_1.IgnitionConfig{
			Replace: t3_1.Resource{Source: r, Compression: ptr(compressionGzip)}}}}
	}),
	"3.2.0": wrapAt(v3_2.Parse, func(r *string) t3_2.Config {
		return t3_2.Config{Ignition: t3_2.Ignition{Version: "3.2.0", Config: t3_2.IgnitionConfig{
			Replace: t3_2.Resource{Source: r, Compression: ptr(compressionGzip)}}}}
	}),
	"3.3.0": wrapAt(v3_3.Parse, func(r *string) t3_3.Config {
		return t3_3.Config{Ignition: t3_3.Ignition{Version: "3.3.0", Config: t3_3.IgnitionConfig{
			Replace: t3_3.Resource{Source: r, Compression: ptr(compressionGzip)}}}}
	}),
	"3.4.0": wrapAt(v3_4.Parse, func(r *string) t3_4.Config {
		return t3_4.Config{Ignition: t3_4.Ignition{Version: "3.4.0", Config: t3_4.IgnitionConfig{
			Replace: t3_4.Resource{Source: r, Compression: ptr(compressionGzip)}}}}
	}),
	"3.5.0": wrapAt(v3_5.Parse, func(r *string) t3_5.Config {
		return t3_5.Config{Ignition: t3_5.Ignition{Version: "3.5.0", Config: t3_5.IgnitionConfig{
			Replace: t3_5.Resource{Source: r, Compression: ptr(compressionGzip)}}}}
	}),
	"3.6.0": wrapAt(v3_6.Parse, func(r *string) t3_6.Config {
		return t3_6.Config{Ignition: t3_6.Ignition{Version: "3.6.0", Config: t3_6.IgnitionConfig{
			Replace: t3_6.Resource{Source: r, Compression: ptr(compressionGzip)}}}}
	}),
}

// wrapAt builds the wrapFunc of one spec version from its exact-version parser and its typed
// wrapper: marshalled, pruned like every config the provider emits, and parsed as a node would.
func wrapAt[C any](parse func([]byte) (C, report.Report, error), build func(source *string) C) wrapFunc {
	return func(source string) ([]byte, error) {
		raw, err := json.Marshal(build(&source))
		if err != nil {
			return nil, fmt.Errorf("encoding the wrapper config: %w", err)
		}
		out, err := normalize(raw)
		if err != nil {
			return nil, fmt.Errorf("encoding the wrapper config: %w", err)
		}
		if _, rpt, err := parse(out); err != nil {
			return nil, fmt.Errorf("the wrapper config is not valid Ignition: %w: %s", err, strings.TrimSpace(rpt.String()))
		}
		return out, nil
	}
}

// wrapConfig returns a wrapper of config at spec version, carrying config gzipped in a data
// URL, or nil where the version cannot (3.0.0). A node applies the wrapper exactly as config.
func wrapConfig(version string, config []byte) ([]byte, error) {
	wrap, ok := wrappers[version]
	if !ok {
		return nil, nil
	}
	return wrap("data:;base64," + base64.StdEncoding.EncodeToString(gzipBytes(config)))
}
