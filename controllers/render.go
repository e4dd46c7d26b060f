/*
Copyright The cabpi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// placeholderToken stands in for the join token while the input is built (it has the length and
// form of a real one); renderAndStore puts the real token into the rendered data.
const placeholderToken = configinput.PlaceholderToken

// tokenSource gives the join token new data carries, with its expiration, and whether it was
// made (or, after an interrupted try, reused) for this data: such a token is removed if the data
// is not stored. The actions choose theirs: the config's next token (nextToken), or the current
// data's while it lasts (currentOrNextToken).
type tokenSource func(ctx context.Context, remote client.Client, s *scope, now time.Time) (token joinToken, expiration time.Time, made bool, err error)

// stored is what renderAndStore did: the data it stored, or why it stored none.
type stored struct {
	out ignition.Output
	// tokenMade: the data carries a join token made for it (counted by the caller).
	tokenMade bool
	// notStored: the input does not render or fit, or the workload cluster cannot be reached.
	notStored *notStored
	// err is retried with backoff; reason is what DataSecretAvailable says meanwhile.
	err    error
	reason string
}

func (st stored) ok() bool { return st.notStored == nil && st.err == nil }

// renderAndStore renders in and writes the data Secret. When the data gets a join token of ours
// (in.joinToken: the input carries placeholderToken), it renders once with the placeholder;
// only data that renders gets a join token, from tokens, and the token goes into the rendered
// config in place of the placeholder (ignition.Prepared.WithJoinToken: kubeadm's configuration
// is encoded again, nothing else is rendered twice). Bad input never creates a token (ADR 001).
func (r *Reconciler) renderAndStore(ctx context.Context, s *scope, in nodeInput, tokens tokenSource) stored {
	start := time.Now()
	prepared, err := ignition.Prepare(in.Input)
	if err != nil {
		return stored{notStored: renderFailure(err)}
	}
	if why := storable(prepared.Output()); why != nil {
		return stored{notStored: why}
	}
	took := time.Since(start)
	if !in.joinToken {
		out := prepared.Output()
		if err := r.storeDataSecret(ctx, s, in, out.Data, ""); err != nil {
			return stored{err: err, reason: cabpiv1.DataSecretInternalErrorReason}
		}
		r.observeStored(ctx, s, in, out, took)
		return stored{out: out}
	}

	// The render carries the placeholder token, as long as a real one: what it renders, and
	// how large it is, is what the real token gives. The render's duration leaves out the
	// token's round trip to the workload cluster.
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return stored{notStored: workloadUnreachable(err)}
	}
	token, expiration, made, err := tokens(ctx, remote, s, r.Clock.Now())
	if err != nil {
		return stored{err: err, reason: cabpiv1.BootstrapTokenFailedReason}
	}
	start = time.Now()
	out, err := prepared.WithJoinToken(token.Value)
	took += time.Since(start)
	res := stored{out: out, tokenMade: made}
	if err != nil {
		res.notStored = renderFailure(err)
	} else if why := storable(out); why != nil {
		res.notStored = why
	} else if err := r.storeDataSecret(ctx, s, in, out.Data, token.ID); err != nil {
		res.err, res.reason = err, cabpiv1.DataSecretInternalErrorReason
	}
	configKey := client.ObjectKeyFromObject(s.config)
	if !res.ok() {
		if made {
			// The token was made for data that was not stored: no machine can have it. Removed,
			// so retries leave no tokens behind. A kept token stays: the stored data carries it.
			if derr := deleteJoinToken(ctx, remote, token.ID); derr != nil {
				ctrl.LoggerFrom(ctx).Error(derr, "Removing a join token for data never stored", "tokenID", token.ID)
			}
			r.memory.forgetToken(configKey)
		}
		return res
	}
	r.memory.setToken(configKey, token.ID, expiration)
	r.observeStored(ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("tokenID", token.ID)), s, in, out, took)
	return res
}

// nextToken is the config's next join token, replacing the current data's (ensureJoinToken).
func (r *Reconciler) nextToken(ctx context.Context, remote client.Client, s *scope, now time.Time) (joinToken, time.Time, bool, error) {
	token, err := ensureJoinToken(ctx, remote, s.config, s.currentTokenID(), r.TokenTTL, now)
	return token, now.UTC().Add(r.TokenTTL), true, err
}

// currentOrNextToken is the token of the current data (the data Secret's annotation) while it
// exists in the workload cluster: data rendered again before provisioning keeps its token, so a
// machine that already took the earlier data still joins. When that token is gone it is the
// next one.
func (r *Reconciler) currentOrNextToken(ctx context.Context, remote client.Client, s *scope, now time.Time) (joinToken, time.Time, bool, error) {
	if current := s.currentTokenID(); current != "" {
		token, expiration, err := currentJoinToken(ctx, remote, s.config, current, now)
		if err == nil {
			return token, expiration, false, nil
		}
		if !errors.Is(err, errTokenGone) {
			return joinToken{}, time.Time{}, false, err
		}
		ctrl.LoggerFrom(ctx).Info("The join token of the data is gone; the data rendered again gets a fresh one", "tokenID", current)
	}
	return r.nextToken(ctx, remote, s, now)
}

// storable says why rendered data cannot be stored (it does not fit in a Secret); nil when it can.
func storable(out ignition.Output) *notStored {
	if msg := configinput.DataTooLarge(out.Size.Bytes); msg != "" {
		return tooLarge(msg)
	}
	return nil
}

// observeStored logs data rendered from in and just stored, rendered in took, and puts its
// duration and size into the metrics.
func (r *Reconciler) observeStored(ctx context.Context, s *scope, in nodeInput, out ignition.Output, took time.Duration) {
	metrics.ObserveRender(s.roleLabel(in.Role), string(configinput.Variant(&s.config.Spec)), took, out.Size.Bytes)
	ctrl.LoggerFrom(ctx).Info("Rendered bootstrap data", "role", in.Role, "platform", s.platform(),
		"ignitionVersion", out.SpecVersion, "bytes", out.Size.Bytes, "gzipBytes", out.Size.GzipBytes,
		"compressed", out.Size.Compressed, "wrapped", out.Size.Wrapped)
}

// storedAs is the outcome of data stored by res: DataSecretAvailable True (or its warnings),
// looked at again to keep a join token of ours usable.
func (r *Reconciler) storedAs(s *scope, in nodeInput, res stored) outcome {
	var requeue time.Duration
	if in.joinToken {
		requeue = r.policy().tokenCheckInterval()
	}
	return storedOutcome(storedData{secretName: dataSecretName(s.config), inputsHash: in.hash, specHash: in.specHash}, res.out, s.platform(), requeue)
}

// workloadUnreachable: no join token can be made while the workload cluster cannot be reached.
func workloadUnreachable(err error) *notStored {
	return &notStored{reason: cabpiv1.BootstrapTokenFailedReason, requeue: waitRequeue,
		message: fmt.Sprintf("Workload cluster not reachable to create the join token: %v", err)}
}
