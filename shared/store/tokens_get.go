package store

import (
	"context"

	"github.com/maasflow/maasflow/shared/domain"
)

// GetEnrollmentToken reads a token's stored side by hash: ItemNotFoundError when
// there is none. The onboarding workflow reads back the token it just wrote
// (requirements readiness §8.1: token persistence present and consistent before deploy)
// and checks at completion that the consumed token belongs to the run.
func (s *Store) GetEnrollmentToken(ctx context.Context, hash string) (domain.EnrollmentToken, error) {
	var t domain.EnrollmentToken
	if err := s.get(ctx, kindToken, shortHash(hash), tokenKey(hash), &t); err != nil {
		return domain.EnrollmentToken{}, err
	}
	return t, nil
}
