package buildconfig

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	hncv1alpha2 "sigs.k8s.io/hierarchical-namespaces/api/v1alpha2"
)

// IsCopy says whether HNC copied the object from an ancestor: what an operator placed is the
// object without the label.
func IsCopy(obj metav1.Object) bool {
	_, copied := obj.GetLabels()[hncv1alpha2.LabelInheritedFrom]
	return copied
}

// placed is an object and where it was placed, as seen from the namespace being resolved.
type placed struct {
	name string
	// from is the namespace where the operator placed the object.
	from string
	// level is how far above the resolved namespace from is: 0 for the namespace itself.
	level int
}

// unknownLevel ranks objects whose source is not an ancestor (HNC would not have copied them)
// below every real level.
const unknownLevel = 1 << 20

// ancestry is a namespace's place in the HNC tree, read from the tree labels HNC sets on it.
type ancestry struct {
	namespace string
	// depths maps the namespace and each of its ancestors to its distance from the namespace.
	depths map[string]int
}

func ancestryOf(ns *corev1.Namespace) ancestry {
	a := ancestry{namespace: ns.Name, depths: map[string]int{}}
	for key, value := range ns.Labels {
		name, ok := strings.CutSuffix(key, hncv1alpha2.LabelTreeDepthSuffix)
		if !ok {
			continue
		}
		if depth, err := strconv.Atoi(value); err == nil {
			a.depths[name] = depth
		}
	}
	return a
}

// ancestors are the namespaces above, nearest first.
func (a ancestry) ancestors() []string {
	var above []string
	for name, depth := range a.depths {
		if depth > 0 {
			above = append(above, name)
		}
	}
	slices.SortFunc(above, func(x, y string) int { return cmp.Compare(a.depths[x], a.depths[y]) })
	return above
}

// below lists the namespaces under ancestor down to the namespace itself, top first: the path
// of the namespace's own droplet repository below one placed in ancestor.
func (a ancestry) below(ancestor string) []string {
	var path []string
	for name, depth := range a.depths {
		if depth < a.depths[ancestor] {
			path = append(path, name)
		}
	}
	slices.SortFunc(path, func(x, y string) int { return cmp.Compare(a.depths[y], a.depths[x]) })
	return path
}

// place says where an object in the namespace was placed: in the namespace itself (level 0)
// or, for an HNC copy, in the ancestor it was copied from.
func (a ancestry) place(obj metav1.Object) placed {
	from, copied := obj.GetLabels()[hncv1alpha2.LabelInheritedFrom]
	if !copied {
		return placed{name: obj.GetName(), from: a.namespace, level: 0}
	}
	return a.placeIn(obj.GetName(), from)
}

// placeIn says where an object placed in namespace from stands, seen from the namespace.
func (a ancestry) placeIn(name, from string) placed {
	level, ok := a.depths[from]
	if !ok {
		level = unknownLevel
	}
	return placed{name: name, from: from, level: level}
}

// nearest returns the candidates at the lowest level; more than one means the operator placed
// two of a kind at the same level.
func nearest(candidates []placed) []placed {
	if len(candidates) == 0 {
		return nil
	}
	slices.SortFunc(candidates, func(a, b placed) int {
		return cmp.Or(cmp.Compare(a.level, b.level), strings.Compare(a.name, b.name))
	})
	n := 1
	for n < len(candidates) && candidates[n].level == candidates[0].level {
		n++
	}
	return candidates[:n]
}

func names(ps []placed) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.name
	}
	return strings.Join(out, ", ")
}
