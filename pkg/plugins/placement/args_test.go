package placement

import (
	"testing"

	"github.com/caldera-sched/caldera/pkg/plugins/args/argstest"
)

func TestNewRejectsBadArgs(t *testing.T) {
	argstest.Refused(t, New, nil, []argstest.Bad{
		{Name: "packing above 1", Raw: `{"packingStrength": 1.5}`, Field: "packingStrength"},
		{Name: "negative packing", Raw: `{"packingStrength": -0.1}`, Field: "packingStrength"},
		{Name: "invalid label key", Raw: `{"topologyKeys": ["not a key"]}`, Field: "topologyKeys[0]"},
		{Name: "duplicate key", Raw: `{"topologyKeys": ["rack", "rack"]}`, Field: "topologyKeys[1]"},
		{Name: "too many keys", Raw: `{"topologyKeys": ["a","b","c","d","e","f","g","h","i"]}`, Field: "topologyKeys"},
		{Name: "misspelt field", Raw: `{"topologyKey": ["rack"]}`, Field: "topologyKey"},
	})
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
