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
	"sync"
)

// compressionGzip is Ignition's name of the one compression it reads.
const compressionGzip = "gzip"

// gzipWriters keeps compressors between uses: a new one allocates most of a megabyte, and a
// render compresses each file and the config. A reset writer gives the same bytes as a new one.
var gzipWriters = sync.Pool{New: func() any {
	// BestCompression is a valid level: there is no error.
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestCompression)
	return zw
}}

// gzipBytes compresses data at best compression. The header has no name and no timestamp, so
// identical data gives identical bytes (Render is deterministic). A bytes.Buffer never fails a
// write, so there is no error to return.
func gzipBytes(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	gzipWriters.Put(zw)
	return buf.Bytes()
}

// OverLimit reports whether the data is larger than the platform's user-data limit. Nothing is
// ever cut to fit: the data is delivered whole, or the caller reports it.
func (s SizeReport) OverLimit() bool {
	return s.Limit > 0 && s.Bytes > s.Limit
}
