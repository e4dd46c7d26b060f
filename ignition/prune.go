package ignition

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// pruneEmpty removes null values, empty objects and empty arrays from an encoded config.
//
// Ignition's Go types marshal every unset struct as {} ("proxy": {}, "group": {}), which makes
// the output several times longer than what it says and counts against platform user-data
// limits. Absent and empty mean the same to Ignition, so the pruned config is equivalent; it is
// validated again after pruning all the same. Keys come out sorted, so the bytes stay
// deterministic; numbers keep their exact text.
func pruneEmpty(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding config to prune it: %w", err)
	}
	pruned, _ := prune(v)
	out, err := json.Marshal(pruned)
	if err != nil {
		return nil, fmt.Errorf("encoding pruned config: %w", err)
	}
	return out, nil
}

// prune returns v without empty members, and whether anything is left of it.
func prune(v any) (any, bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		for k, member := range t {
			if p, keep := prune(member); keep {
				t[k] = p
			} else {
				delete(t, k)
			}
		}
		return t, len(t) > 0
	case []any:
		kept := t[:0]
		for _, member := range t {
			// An array member is never dropped (its position may matter); only emptied.
			p, _ := prune(member)
			if p == nil {
				p = map[string]any{}
			}
			kept = append(kept, p)
		}
		return kept, len(kept) > 0
	default:
		return v, true
	}
}
