// Package resources holds a plain resource vector for Caldera's policy code.
//
// Policy packages (pkg/gang, pkg/queue) must not depend on Kubernetes API
// machinery, so quantities are flattened to int64: cpu in millicores, every other
// resource in its base unit (bytes for memory, devices for extended resources).
// Converting from a v1.ResourceList happens at the edge, in pkg/cache.
package resources

import (
	"sort"
	"strconv"
	"strings"
)

// CPU is the name of the cpu resource, whose values are in millicores.
const CPU = "cpu"

// List maps a resource name to an amount. A missing name means zero. The zero
// value (nil) is an empty list for reading; use Add or Clone to get a writable one.
type List map[string]int64

// Clone returns a copy that the caller may modify.
func (l List) Clone() List {
	out := make(List, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// Add adds o to l in place and returns l, allocating l when nil.
func (l List) Add(o List) List {
	if l == nil {
		l = make(List, len(o))
	}
	for k, v := range o {
		l[k] += v
	}
	return l
}

// Sub subtracts o from l in place and returns l, allocating l when nil.
// Amounts may go negative; callers that need a floor use Less.
func (l List) Sub(o List) List {
	if l == nil {
		l = make(List, len(o))
	}
	for k, v := range o {
		l[k] -= v
	}
	return l
}

// Less returns a new list of l less o, never below zero per resource: what
// is left of an amount when part of it is taken (o's names absent from l
// stay absent).
func (l List) Less(o List) List {
	out := make(List, len(l))
	for k, v := range l {
		out[k] = max(v-o[k], 0)
	}
	return out
}

// Exceeding returns, in sorted order, the names for which l asks more than
// capacity holds. Only names present in l are compared, so a request for cpu
// is never refused because the capacity lacks an unrelated resource.
func (l List) Exceeding(capacity List) []string {
	var out []string
	for k, v := range l {
		if v > 0 && v > capacity[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// FitsIn reports whether every amount in l is at most the same name in capacity.
func (l List) FitsIn(capacity List) bool {
	for k, v := range l {
		if v > 0 && v > capacity[k] {
			return false
		}
	}
	return true
}

// IsZero reports whether every amount is zero.
func (l List) IsZero() bool {
	for _, v := range l {
		if v != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether l and o hold the same amounts, treating missing as zero.
func (l List) Equal(o List) bool {
	for k, v := range l {
		if o[k] != v {
			return false
		}
	}
	for k, v := range o {
		if l[k] != v {
			return false
		}
	}
	return true
}

// String renders the list as "cpu=1500m,memory=1073741824" in name order, for
// messages that users read.
func (l List) String() string {
	names := make([]string, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(Format(k, l[k]))
	}
	return b.String()
}

// Format renders one amount in the unit users wrote it in: cpu as cores when
// whole, millicores otherwise; other resources as plain integers.
func Format(name string, v int64) string {
	if name == CPU {
		if v%1000 == 0 {
			return strconv.FormatInt(v/1000, 10)
		}
		return strconv.FormatInt(v, 10) + "m"
	}
	return strconv.FormatInt(v, 10)
}
