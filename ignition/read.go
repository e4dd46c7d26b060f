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

package ignition

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	exp "github.com/coreos/ignition/v2/config/v3_7_experimental"
	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
	"github.com/vincent-petithory/dataurl"
)

// maxReadBytes bounds what Unwrap and ReadFiles decompress: rendered data is at most a Secret
// (1 MiB), and a larger expansion is refused rather than read without limit.
const maxReadBytes = 64 << 20

// Unwrap returns the config a node applies from rendered data: the data itself, or, when it is
// a wrapper (Output.Size.Wrapped), the config its ignition.config.replace carries in a data
// URL, decompressed. A replace from anywhere else cannot be read here and is an error.
func Unwrap(data []byte) ([]byte, error) {
	var head struct {
		Ignition struct {
			Config struct {
				Replace struct {
					Source      *string `json:"source"`
					Compression *string `json:"compression"`
				} `json:"replace"`
			} `json:"config"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("reading the Ignition config: %w", err)
	}
	replace := head.Ignition.Config.Replace
	if replace.Source == nil || *replace.Source == "" {
		return data, nil
	}
	config, err := decodeResource(*replace.Source, replace.Compression, maxReadBytes)
	if err != nil {
		return nil, fmt.Errorf("reading ignition.config.replace: %w", err)
	}
	return config, nil
}

// ReadFiles returns what each file of rendered data holds once Ignition has written it, by
// path: the wrapper followed (Unwrap), contents and appends decoded and gunzipped. Files whose
// contents are fetched at boot (a remote source) cannot be read here and are left out, as are
// files without contents.
func ReadFiles(data []byte) (map[string][]byte, error) {
	config, err := Unwrap(data)
	if err != nil {
		return nil, err
	}
	cfg, rpt, err := exp.ParseCompatibleVersion(config)
	if err != nil {
		return nil, fmt.Errorf("parsing the Ignition config: %w: %s", err, strings.TrimSpace(rpt.String()))
	}
	files := map[string][]byte{}
	for _, f := range cfg.Storage.Files {
		content, readable, err := readFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.Path, err)
		}
		if readable {
			files[f.Path] = content
		}
	}
	return files, nil
}

// readFile returns what f holds once written, contents then appends, and false when it has no
// contents or a part of it is fetched at boot.
func readFile(f exptypes.File) (content []byte, readable bool, err error) {
	for _, r := range append([]exptypes.Resource{f.Contents}, f.Append...) {
		if r.Source == nil {
			continue
		}
		if !strings.HasPrefix(*r.Source, "data:") {
			return nil, false, nil
		}
		part, err := decodeResource(*r.Source, r.Compression, maxReadBytes)
		if err != nil {
			return nil, false, err
		}
		content, readable = append(content, part...), true
	}
	return content, readable, nil
}

// errNotDataURL says a resource's source is not a data URL.
var errNotDataURL = errors.New("the source is not a data URL")

// decodeResource decodes a data URL, gunzipping it when compression says gzip, to at most limit
// bytes (errTooLarge beyond).
func decodeResource(source string, compression *string, limit int64) ([]byte, error) {
	u, err := dataurl.DecodeString(source)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotDataURL, err)
	}
	if compression == nil || *compression == "" {
		return u.Data, nil
	}
	if *compression != compressionGzip {
		return nil, fmt.Errorf("unknown compression %q", *compression)
	}
	return gunzip(u.Data, limit)
}

// errTooLarge says decompressed data is over the limit it is read with; errNotGzip that it
// does not decompress.
var (
	errTooLarge = errors.New("too large decompressed")
	errNotGzip  = errors.New("not gzip data")
)

// gunzip decompresses data, refusing more than limit bytes.
func gunzip(data []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotGzip, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotGzip, err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("more than %d bytes: %w", limit, errTooLarge)
	}
	return out, nil
}
