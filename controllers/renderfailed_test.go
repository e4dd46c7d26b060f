package controllers

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// Each renderer error names the condition reason of the document or field at fault: a variant
// mismatch is Butane's or the Container Linux Config's, by the field it is reported on.
func TestRenderFailedReasons(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&ignition.Error{Kind: ignition.ErrInvalidButane, Place: ignition.At(ignition.PartButane)}, cabpiv1.InvalidButaneReason},
		{&ignition.Error{Kind: ignition.ErrVariantMismatch, Place: ignition.At(ignition.PartButane)}, cabpiv1.InvalidButaneReason},
		{&ignition.Error{Kind: ignition.ErrInvalidContainerLinuxConfig, Place: ignition.At(ignition.PartContainerLinuxConfig)}, cabpiv1.InvalidContainerLinuxConfigReason},
		{&ignition.Error{Kind: ignition.ErrVariantMismatch, Place: ignition.At(ignition.PartContainerLinuxConfig)}, cabpiv1.InvalidContainerLinuxConfigReason},
		{&ignition.Error{Kind: ignition.ErrOwnedPathConflict, Place: ignition.At(ignition.PartContainerLinuxConfig)}, cabpiv1.OwnedPathConflictReason},
		{&ignition.Error{Kind: ignition.ErrUnsupportedIgnitionVersion, Place: ignition.At(ignition.PartIgnitionVersion)}, cabpiv1.UnsupportedIgnitionVersionReason},
		{&ignition.Error{Kind: ignition.ErrInvalidInput, Place: ignition.At(ignition.PartContainerLinuxConfig)}, cabpiv1.InvalidConfigReason},
		{errors.New("not an input error"), cabpiv1.InvalidConfigReason},
	}
	for _, tc := range cases {
		o := renderFailed(tc.err)
		assert.Equal(t, tc.want, o.reason, "%v", tc.err)
		assert.True(t, o.warn)
	}
}
