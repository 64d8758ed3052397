package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Cloud Foundry rules that the webhooks, the reconcilers and kubectl-cf share. Each is
// written once, here.

// DisplayNamed is an org, a space or an app: an object with a Cloud Foundry display name.
// +kubebuilder:object:generate=false
type DisplayNamed interface {
	client.Object
	GetDisplayName() string
}

// SameDisplayName says whether two display names are the same name, compared
// case-insensitively as Cloud Foundry does.
func SameDisplayName(a, b string) bool { return strings.EqualFold(a, b) }

// DisplayNameKey is a label value that two display names share when SameDisplayName says they
// are the same: a hash of the name with each letter folded as strings.EqualFold folds it. Two
// names may share a key and differ (a collision of 160 bits), so the key narrows a search and
// SameDisplayName decides.
func DisplayNameKey(displayName string) string {
	folded := strings.Map(func(r rune) rune {
		smallest := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			smallest = min(smallest, f)
		}
		return smallest
	}, displayName)
	sum := sha256.Sum256([]byte(folded))
	return hex.EncodeToString(sum[:20])
}

// DisplayNameOwner returns the object that owns a display name among items: the oldest live
// one with that name, ties going to the smaller GUID, so that every reconcile of every object
// and every client agree. Deleted objects give up their name. It returns nil if none has it.
func DisplayNameOwner[T any, P interface {
	*T
	DisplayNamed
}](items []T, displayName string) P {
	var owner P
	for i := range items {
		item := P(&items[i])
		if !item.GetDeletionTimestamp().IsZero() || !SameDisplayName(item.GetDisplayName(), displayName) {
			continue
		}
		if owner == nil || olderThan(item, owner) {
			owner = item
		}
	}
	return owner
}

func olderThan(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}

// NeedsOperator says whether a reason is a state that only a person can end (a name taken, a
// namespace in the way, an invalid name): waiting longer only hides it, so clients fail fast
// and reconcilers look again only now and then.
func NeedsOperator(reason string) bool {
	return slices.Contains([]string{
		AnchorConflictReason,
		AnchorForbiddenReason,
		AnchorRefusedReason,
		DuplicateNameReason,
		WrongNamespaceReason,
		InvalidNameReason,
	}, reason)
}

// Waiting says whether a reason is a step on the way that another component ends by itself
// (HNC making a namespace or copying, kpack building): a condition that enters it is no news
// for a person, so no event is recorded for it; the status says it.
func Waiting(reason string) bool {
	return slices.Contains([]string{
		AnchorPendingReason,
		OrgNotReadyReason,
		NamespaceNotReadyReason,
		PropagationPendingReason,
		BuilderNotReadyReason,
		WaitingReason,
		QueuedReason,
		BuildScheduledReason,
		BuildRunningReason,
		RebuildingReason,
	}, reason)
}

// namespaceGUID is the shape of the GUID of an org or a space: a lowercase UUID. The CRDs of
// CFOrg and CFSpace check the same pattern, with namespaceGUIDMessage, in a CEL rule on
// metadata.name, which holds while cf-hnc's webhooks are down.
var namespaceGUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

const namespaceGUIDMessage = "an org's or a space's name is its GUID and names its namespace: a lowercase UUID (8-4-4-4-12 hexadecimal digits) such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10, as kubectl cf create-org and create-space make"

// ValidateNamespaceGUID checks the name (GUID) of an org or a space, which names the
// namespace that HNC makes for it. Any DNS label could name a namespace, but one that is not a
// UUID could claim a namespace that the cluster uses for something else (istio-system,
// monitoring) inside an org's tree. It returns a message that says what would be accepted, or "".
func ValidateNamespaceGUID(name string) string {
	if !namespaceGUID.MatchString(name) {
		return namespaceGUIDMessage
	}
	return ""
}

// ValidateGUID checks the name (GUID) of an app or a build. Apps name kpack Images (whose names
// kpack puts in label values), builds name rebuild lineages in label values: such a GUID must
// be a DNS label of at most 63 characters. Rebuilds are named after kpack's Builds, so these
// GUIDs need not be UUIDs. It returns a message that says what is wrong and what would be
// accepted, or "".
func ValidateGUID(name string) string {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Sprintf("not a valid GUID: %s (a CF GUID such as 4c46d7e1-0f7b-4a5e-9d2a-5c1f8e3b9a10 is)",
			strings.Join(errs, "; "))
	}
	return ""
}

// SpaceRepository is where the droplets of a space go: the droplet repository placed at an
// ancestor of the space (an org or the root), followed by the namespaces below that ancestor
// down to the space (for a repository placed in the root, "<org GUID>/<space GUID>"; in the
// org, "<space GUID>"). Every space thus has a repository of its own that no other space
// shares, whatever its apps are called.
func SpaceRepository(placed string, below []string) string {
	return strings.Join(append([]string{strings.TrimSuffix(placed, "/")}, below...), "/")
}

// WithinRepository says whether repository is parent or lies below it.
func WithinRepository(repository, parent string) bool {
	repository, parent = strings.TrimSuffix(repository, "/"), strings.TrimSuffix(parent, "/")
	return repository == parent || strings.HasPrefix(repository, parent+"/")
}

// EnclosingRepository returns the repository among placedAbove (the droplet repositories placed
// in the root and the org above a space) that repository lies within, or "". The credentials
// placed with a repository above reach everything below it from every space below: a space
// whose own repository lay within one, other than within the space's path below it, would keep
// its droplets where other spaces' credentials read them.
func EnclosingRepository(repository string, placedAbove []string) string {
	for _, placed := range placedAbove {
		if WithinRepository(repository, placed) {
			return strings.TrimSuffix(placed, "/")
		}
	}
	return ""
}

// DropletRepository is the repository of an app's droplets, below its space's repository.
func DropletRepository(spaceRepository, appGUID string) string {
	return spaceRepository + "/" + appGUID
}

// PackageRepository is the repository of an app's uploaded source packages, below its space's
// repository.
func PackageRepository(spaceRepository, appGUID string) string {
	return spaceRepository + "/packages/" + appGUID
}

// The levels at which `kubectl cf set-registry` places build configuration, as they appear in
// the names of what it places. The names differ per level because HNC overwrites an object
// below with the one it propagates there under the same name.
const (
	RootLevel  = "root"
	OrgLevel   = "org"
	SpaceLevel = "space"
)

// reservedPrefixes start the names of build configuration that operators place. Only
// operators may create objects with these names in the CF tree (config/policies): a tenant's
// object of that name would stop HNC propagating the operator's.
var reservedPrefixes = []string{"cf-registry-", "cf-build-"}

// RegistrySecretName is the name of the registry credential Secret placed at a level.
func RegistrySecretName(level string) string { return reservedPrefixes[0] + level }

// BuildServiceAccountName is the name of the build ServiceAccount placed at a level.
func BuildServiceAccountName(level string) string { return reservedPrefixes[1] + level }

// IsReservedName says whether a name is one that only operators may use in the CF tree.
func IsReservedName(name string) bool {
	return slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// OwnedBuildMetadata are the label and annotation keys of a CFBuild that only cf-hnc sets: they
// make a CFBuild a rebuild, which may move an app past its org's upgrade policy.
var OwnedBuildMetadata = []string{RebuildOfLabel, KpackBuildLabel, KpackBuildNumberLabel, RebuildReasonAnnotation}

// maxProcessName is the longest CFProcess name: its instances' pods are named after it, and a
// StatefulSet's revision label, "<name>-<10 characters>", must be a label value.
const maxProcessName = 52

// WebProcessType is the process type that every app has, which routes reach.
const WebProcessType = "web"

// ProcessName is the name of the CFProcess of an app's process type: "<app>-<type>", or, for
// an app GUID too long for that, a prefix of it and a hash of the whole GUID.
func ProcessName(appGUID, processType string) string {
	name := appGUID + "-" + processType
	if len(name) <= maxProcessName {
		return name
	}
	sum := sha256.Sum256([]byte(appGUID))
	hash := hex.EncodeToString(sum[:4])
	prefix := strings.TrimRight(appGUID[:maxProcessName-len(processType)-len(hash)-2], "-")
	return prefix + "-" + hash + "-" + processType
}

// ImageDigest is the digest of an image reference, or the reference itself if it has none.
func ImageDigest(ref string) string {
	if _, digest, ok := strings.Cut(ref, "@"); ok {
		return digest
	}
	return ref
}

// SameImage says whether two image references name the same image. The same image is named
// from different repositories (a stack's run image, a Builder's copy of it; a droplet pushed
// under the tags of several builds): only the digest says whether two are the same.
func SameImage(a, b string) bool {
	return a != "" && b != "" && ImageDigest(a) == ImageDigest(b)
}
