package metrics

import (
	"context"

	"k8s.io/client-go/rest"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CountWrites returns c with every write counted in cf_hnc_api_writes_total: creates, updates,
// patches, server-side applies and deletes, and the same on subresources (status). Reads go to
// c unchanged. Only writes the apiserver accepted are counted: the figure is what cf-hnc
// changed in the cluster, and a quiet foundation must show zero.
func CountWrites(c client.Client) client.Client {
	return &countingClient{Client: c}
}

// NewCountingClient is a client.NewClientFunc for ctrl.Options.NewClient: the manager's client,
// counting its writes.
func NewCountingClient(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.New(config, options)
	if err != nil {
		return nil, err
	}
	return CountWrites(c), nil
}

type countingClient struct {
	client.Client
}

var _ client.Client = (*countingClient)(nil)

// count adds one write of obj's kind if err is nil; a kind the scheme does not know is counted
// as "unknown" rather than not at all.
func (c *countingClient) count(verb string, obj runtime.Object, err error) error {
	if err != nil {
		return err
	}
	kind := "unknown"
	if gvk, gvkErr := c.GroupVersionKindFor(obj); gvkErr == nil {
		kind = gvk.Kind
	}
	apiWrites.WithLabelValues(verb, kind).Inc()
	return nil
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.count("create", obj, c.Client.Create(ctx, obj, opts...))
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.count("update", obj, c.Client.Update(ctx, obj, opts...))
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.count("patch", obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.count("delete", obj, c.Client.Delete(ctx, obj, opts...))
}

func (c *countingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return c.count("deletecollection", obj, c.Client.DeleteAllOf(ctx, obj, opts...))
}

// Apply takes an apply configuration, which names its own kind.
func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := c.Client.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	kind := applyKind(obj)
	apiWrites.WithLabelValues("apply", kind).Inc()
	return nil
}

func (c *countingClient) Status() client.SubResourceWriter {
	return c.SubResource("status")
}

func (c *countingClient) SubResource(subResource string) client.SubResourceClient {
	return &countingSubResource{SubResourceClient: c.Client.SubResource(subResource), parent: c, name: subResource}
}

type countingSubResource struct {
	client.SubResourceClient
	parent *countingClient
	name   string
}

func (s *countingSubResource) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	return s.parent.count("create_"+s.name, obj, s.SubResourceClient.Create(ctx, obj, subResource, opts...))
}

func (s *countingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.parent.count("update_"+s.name, obj, s.SubResourceClient.Update(ctx, obj, opts...))
}

func (s *countingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.parent.count("patch_"+s.name, obj, s.SubResourceClient.Patch(ctx, obj, patch, opts...))
}

func (s *countingSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := s.SubResourceClient.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	kind := applyKind(obj)
	apiWrites.WithLabelValues("apply_"+s.name, kind).Inc()
	return nil
}

// applyKind is the kind an apply configuration names: typed ones return a pointer, and those
// made from unstructured objects (client.ApplyConfigurationFromUnstructured) a string.
func applyKind(obj runtime.ApplyConfiguration) string {
	switch named := obj.(type) {
	case interface{ GetKind() *string }:
		if named.GetKind() != nil {
			return *named.GetKind()
		}
	case interface{ GetKind() string }:
		if kind := named.GetKind(); kind != "" {
			return kind
		}
	}
	return "unknown"
}
