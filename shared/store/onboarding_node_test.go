package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// onNode is the NodeChoice the admin API makes: a new node when the host
// has none, else the existing node linked to the onboarding; calls counts
// how often it was asked.
func onNode(o domain.Onboarding, newID string, calls *int) NodeChoice {
	return func(n domain.Node, found bool) (domain.Node, error) {
		*calls++
		if !found {
			return domain.Node{ID: newID, SiteID: o.SiteID, Hostname: o.Hostname, Status: domain.NodeOnboarding, OnboardingID: o.ID}, nil
		}
		n.OnboardingID = o.ID
		return n, nil
	}
}

func TestCreateOnboardingOnNodeCreatesOrLinksTheNode(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)

	var calls int
	o1, n1, err := s.CreateOnboardingOnNode(ctx, onboarding("o1", "s1", "gpu01"), onNode(onboarding("o1", "s1", "gpu01"), "n1", &calls))
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, "n1", o1.NodeID)
	assert.Equal(t, int64(1), o1.Version)
	assert.Equal(t, domain.OnboardingPending, o1.Status)
	assert.Equal(t, int64(1), n1.Version)
	stored, err := s.GetOnboarding(ctx, "o1")
	require.NoError(t, err)
	assert.Equal(t, o1, stored)
	node, found, err := s.FindNodeByHost(ctx, "s1", "GPU01")
	require.NoError(t, err)
	require.True(t, found, "the new node claims its host name")
	assert.Equal(t, n1, node)
	assert.Equal(t, "o1", node.OnboardingID)

	// The first onboarding closes; the next one of the host links the same
	// node at its next version.
	_, err = s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = domain.OnboardingFailed; return nil })
	require.NoError(t, err)
	o2, n2, err := s.CreateOnboardingOnNode(ctx, onboarding("o2", "s1", "gpu01"), onNode(onboarding("o2", "s1", "gpu01"), "n-unused", &calls))
	require.NoError(t, err)
	assert.Equal(t, "n1", o2.NodeID)
	assert.Equal(t, int64(2), n2.Version)
	node, err = s.GetNode(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, "o2", node.OnboardingID)
	assert.Equal(t, n1.CreatedAt, node.CreatedAt)
}

func TestCreateOnboardingOnNodeWritesNothingWhenRefused(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	var calls int
	_, _, err := s.CreateOnboardingOnNode(ctx, onboarding("o1", "s1", "gpu01"), onNode(onboarding("o1", "s1", "gpu01"), "n1", &calls))
	require.NoError(t, err)

	t.Run("host held by an open onboarding", func(t *testing.T) {
		_, _, err := s.CreateOnboardingOnNode(ctx, onboarding("o2", "s1", "gpu01"), onNode(onboarding("o2", "s1", "gpu01"), "n2", &calls))
		var held *OpenOnboardingExistsError
		require.ErrorAs(t, err, &held)
		assert.Equal(t, "o1", held.OnboardingID)
		node, err := s.GetNode(ctx, "n1")
		require.NoError(t, err)
		assert.Equal(t, "o1", node.OnboardingID, "the node still names the open onboarding")
		assert.Equal(t, int64(1), node.Version)
		_, err = s.GetOnboarding(ctx, "o2")
		require.ErrorAs(t, err, new(*ItemNotFoundError))
	})
	t.Run("the choice refuses", func(t *testing.T) {
		refused := errors.New("node is retired")
		_, _, err := s.CreateOnboardingOnNode(ctx, onboarding("o3", "s1", "gpu02"), func(domain.Node, bool) (domain.Node, error) {
			return domain.Node{}, refused
		})
		require.ErrorIs(t, err, refused)
		_, err = s.GetOnboarding(ctx, "o3")
		require.ErrorAs(t, err, new(*ItemNotFoundError))
		_, open, err := s.FindOpenOnboarding(ctx, "s1", "gpu02")
		require.NoError(t, err)
		assert.False(t, open, "no host lock without the onboarding")
	})
	t.Run("a node of another host", func(t *testing.T) {
		_, _, err := s.CreateOnboardingOnNode(ctx, onboarding("o4", "s1", "gpu03"), func(domain.Node, bool) (domain.Node, error) {
			return domain.Node{ID: "n4", SiteID: "s1", Hostname: "gpu04"}, nil
		})
		require.ErrorContains(t, err, "not the onboarding's host")
		_, err = s.GetNode(ctx, "n4")
		require.ErrorAs(t, err, new(*ItemNotFoundError))
	})
}

func TestCreateOnboardingOnNodeChoosesAgainWhenTheNodeChanged(t *testing.T) {
	ctx := context.Background()
	t.Run("created meanwhile", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		o := onboarding("o1", "s1", "gpu01")
		var calls int
		choose := onNode(o, "n-mine", &calls)
		_, n, err := s.CreateOnboardingOnNode(ctx, o, func(cur domain.Node, found bool) (domain.Node, error) {
			if calls == 0 {
				// Another request creates the host's node between this
				// choice's read and its write.
				require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "n-theirs", SiteID: "s1", Hostname: "gpu01", Status: domain.NodeOnboarding}))
			}
			return choose(cur, found)
		})
		require.NoError(t, err)
		assert.Equal(t, 2, calls)
		assert.Equal(t, "n-theirs", n.ID)
		_, err = s.GetNode(ctx, "n-mine")
		require.ErrorAs(t, err, new(*ItemNotFoundError))
	})
	t.Run("updated meanwhile", func(t *testing.T) {
		s, _, _ := newTestStore(t)
		require.NoError(t, s.CreateNode(ctx, domain.Node{ID: "n1", SiteID: "s1", Hostname: "gpu01", Status: domain.NodeOnboarding}))
		o := onboarding("o1", "s1", "gpu01")
		var calls int
		choose := onNode(o, "n-unused", &calls)
		_, n, err := s.CreateOnboardingOnNode(ctx, o, func(cur domain.Node, found bool) (domain.Node, error) {
			if calls == 0 {
				_, err := s.UpdateNode(ctx, "n1", func(n *domain.Node) error { n.SKUID = "b200x8"; return nil })
				require.NoError(t, err)
			}
			return choose(cur, found)
		})
		require.NoError(t, err)
		assert.Equal(t, 2, calls)
		assert.Equal(t, int64(3), n.Version)
		assert.Equal(t, "b200x8", n.SKUID, "the concurrent update is kept")
		assert.Equal(t, "o1", n.OnboardingID)
	})
}

func TestConcurrentCreateOnboardingOnNodeOneNodePerHost(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			o := onboarding(fmt.Sprintf("o%02d", i), "s1", "gpu01")
			var calls int
			choose := onNode(o, fmt.Sprintf("n%02d", i), &calls)
			_, _, errs[i] = s.CreateOnboardingOnNode(ctx, o, choose)
		})
	}
	wg.Wait()
	var won []int
	for i, err := range errs {
		if err == nil {
			won = append(won, i)
			continue
		}
		require.ErrorAs(t, err, new(*OpenOnboardingExistsError))
	}
	require.Len(t, won, 1, "one onboarding opens")
	node, found, err := s.FindNodeByHost(ctx, "s1", "gpu01")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, fmt.Sprintf("o%02d", won[0]), node.OnboardingID)
	assert.Equal(t, fmt.Sprintf("n%02d", won[0]), node.ID)
}

func TestCreateOnboardingOnNodeGivesARemovedHostANewNode(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	var calls int
	_, _, err := s.CreateOnboardingOnNode(ctx, onboarding("o1", "s1", "gpu01"), onNode(onboarding("o1", "s1", "gpu01"), "n1", &calls))
	require.NoError(t, err)
	_, err = s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = domain.OnboardingCancelled; return nil })
	require.NoError(t, err)
	successor := func(o domain.Onboarding, id string) NodeChoice {
		return func(domain.Node, bool) (domain.Node, error) {
			return domain.Node{ID: id, SiteID: o.SiteID, Hostname: o.Hostname, Status: domain.NodeOnboarding, OnboardingID: o.ID}, nil
		}
	}

	// A new identity is refused while the host's node is not removed.
	_, _, err = s.CreateOnboardingOnNode(ctx, onboarding("o2", "s1", "gpu01"), successor(onboarding("o2", "s1", "gpu01"), "n2"))
	require.Error(t, err)
	_, err = s.GetNode(ctx, "n2")
	require.ErrorAs(t, err, new(*ItemNotFoundError), "nothing half-written")

	removed, err := s.UpdateNode(ctx, "n1", func(n *domain.Node) error { n.Status = domain.NodeRemoved; return nil })
	require.NoError(t, err)
	o3, n3, err := s.CreateOnboardingOnNode(ctx, onboarding("o3", "s1", "gpu01"), successor(onboarding("o3", "s1", "gpu01"), "n3"))
	require.NoError(t, err)
	assert.Equal(t, "n3", o3.NodeID)
	assert.Equal(t, int64(1), n3.Version)
	node, found, err := s.FindNodeByHost(ctx, "s1", "gpu01")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "n3", node.ID, "the host's claim moved to the new node")
	old, err := s.GetNode(ctx, "n1")
	require.NoError(t, err)
	assert.Equal(t, removed, old, "the removed node is left as it was")
}
