package semver

import "sort"

// Sort sorts versions by increasing precedence. The sort is stable: versions
// of equal precedence (differing in build metadata only) keep their order.
func Sort(versions []Version) {
	sort.SliceStable(versions, func(i, j int) bool { return versions[i].Less(versions[j]) })
}

// Max returns the version of highest precedence, and false when there is
// none. Of several versions with the same precedence it returns the first.
func Max(versions ...Version) (Version, bool) {
	if len(versions) == 0 {
		return Version{}, false
	}
	best := versions[0]
	for _, v := range versions[1:] {
		if best.Less(v) {
			best = v
		}
	}
	return best, true
}
