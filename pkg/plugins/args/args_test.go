package args

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

type testArgs struct {
	Seconds *int64 `json:"seconds,omitempty"`
	Name    string `json:"name,omitempty"`
}

func (a *testArgs) SetDefaults() {
	if a.Seconds == nil {
		v := int64(5)
		a.Seconds = &v
	}
}

func (a *testArgs) Validate() error {
	if *a.Seconds <= 0 {
		return errors.New("seconds: must be greater than 0")
	}
	return nil
}

func TestLoad(t *testing.T) {
	raw := func(s string) runtime.Object {
		return &runtime.Unknown{Raw: []byte(s), ContentType: runtime.ContentTypeJSON}
	}
	tests := []struct {
		name    string
		obj     runtime.Object
		seconds int64  // want, when no error
		wantErr string // substring of the error, "" for none
	}{
		{name: "no args: defaults", obj: nil, seconds: 5},
		{name: "empty raw: defaults", obj: raw(""), seconds: 5},
		{name: "JSON", obj: raw(`{"seconds": 7}`), seconds: 7},
		{name: "YAML", obj: raw("seconds: 9\nname: x\n"), seconds: 9},
		{name: "misspelt field is refused", obj: raw(`{"second": 7}`), wantErr: `unknown field "second"`},
		{name: "wrong type", obj: raw(`{"seconds": "soon"}`), wantErr: "CalderaTest args:"},
		{name: "invalid after defaults", obj: raw(`{"seconds": 0}`), wantErr: "CalderaTest args: seconds: must be greater than 0"},
		{name: "not raw args", obj: &runtime.Unknown{}, seconds: 5},
		{name: "typed object", obj: &typedObject{}, wantErr: "CalderaTest: want args of type runtime.Unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a testArgs
			err := Load("CalderaTest", tc.obj, &a)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load error = %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("Load: %v", err)
			case *a.Seconds != tc.seconds:
				t.Errorf("seconds = %d, want %d", *a.Seconds, tc.seconds)
			}
		})
	}
}

// typedObject is args kube-scheduler would have decoded itself (an in-tree
// type), which out-of-tree plugins never receive.
type typedObject struct{ runtime.Unknown }

func (o *typedObject) DeepCopyObject() runtime.Object { return o }
