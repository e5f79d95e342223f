package placement

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/caldera-sched/caldera/pkg/cache"
)

func TestNewRejectsBadArgs(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"packing above 1", `{"packingStrength": 1.5}`, "packingStrength"},
		{"negative packing", `{"packingStrength": -0.1}`, "packingStrength"},
		{"invalid label key", `{"topologyKeys": ["not a key"]}`, "topologyKeys[0]"},
		{"duplicate key", `{"topologyKeys": ["rack", "rack"]}`, "topologyKeys[1]"},
		{"too many keys", `{"topologyKeys": ["a","b","c","d","e","f","g","h","i"]}`, "topologyKeys"},
		{"misspelt field", `{"topologyKey": ["rack"]}`, "topologyKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &runtime.Unknown{Raw: []byte(tt.raw), ContentType: runtime.ContentTypeJSON}
			// A nil handle: New must refuse bad args before touching it.
			_, err := New(context.Background(), obj, nil, cache.NewProvider())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New(%s) error = %v, want one naming %s", tt.raw, err, tt.want)
			}
		})
	}
}

func TestArgsDefaults(t *testing.T) {
	var a Args
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if len(a.TopologyKeys) != 1 || a.TopologyKeys[0] != DefaultTopologyKey || *a.PackingStrength != DefaultPackingStrength {
		t.Fatalf("defaults: keys %v, packing %v", a.TopologyKeys, *a.PackingStrength)
	}
	none := Args{TopologyKeys: []string{}}
	none.SetDefaults()
	if len(none.TopologyKeys) != 0 {
		t.Fatalf("an explicit empty key list became %v; it means packing only", none.TopologyKeys)
	}
}
