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
