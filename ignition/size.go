package ignition

import (
	"bytes"
	"compress/gzip"
	"fmt"
)

// sizeOf weighs data raw and gzip-compressed at best compression: platforms limit user data
// (EC2 16 KiB raw, OpenStack 64 KiB) and some accept it compressed. The gzip header has no
// name and no timestamp, so the size is deterministic.
func sizeOf(data []byte) (SizeReport, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return SizeReport{}, fmt.Errorf("creating gzip writer: %w", err)
	}
	if _, err := zw.Write(data); err != nil {
		return SizeReport{}, fmt.Errorf("compressing config: %w", err)
	}
	if err := zw.Close(); err != nil {
		return SizeReport{}, fmt.Errorf("compressing config: %w", err)
	}
	return SizeReport{Bytes: len(data), GzipBytes: buf.Len()}, nil
}
