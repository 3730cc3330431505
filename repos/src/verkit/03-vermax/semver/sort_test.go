package semver

import (
	"reflect"
	"testing"
)

func parseAll(t *testing.T, in ...string) []Version {
	t.Helper()
	out := make([]Version, len(in))
	for i, s := range in {
		v, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v
	}
	return out
}

func toStrings(vs []Version) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

func TestSort(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"empty", []string{}, []string{}},
		{"releases", []string{"1.10.0", "1.2.0", "0.9.1", "1.2.0"}, []string{"0.9.1", "1.2.0", "1.2.0", "1.10.0"}},
		{"pre-releases_first", []string{"2.0.0", "2.0.0-rc.1", "1.9.0", "2.0.0-beta"}, []string{"1.9.0", "2.0.0-beta", "2.0.0-rc.1", "2.0.0"}},
		{"stable_for_build_metadata", []string{"1.0.0+b", "0.1.0", "1.0.0+a"}, []string{"0.1.0", "1.0.0+b", "1.0.0+a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vs := parseAll(t, tc.in...)
			Sort(vs)
			if got := toStrings(vs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Sort(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestMax(t *testing.T) {
	if _, ok := Max(); ok {
		t.Error("Max() of nothing reported a version")
	}
	got, ok := Max(parseAll(t, "1.2.3", "1.10.0-rc.1", "1.9.9", "1.10.0-beta")...)
	if !ok || got.String() != "1.10.0-rc.1" {
		t.Errorf("Max = %v, %v; want 1.10.0-rc.1", got, ok)
	}
	got, _ = Max(parseAll(t, "3.0.0+first", "3.0.0+second")...)
	if got.String() != "3.0.0+first" {
		t.Errorf("Max of equal versions = %v, want the first", got)
	}
}
