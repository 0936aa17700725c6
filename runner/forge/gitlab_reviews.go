package forge

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// Reviews reads a merge request's reviews. GitLab has no review object like GitHub's,
// so they are built from three sources:
//
//   - each user in the approvals' approved_by → ReviewApproved of the merge request's
//     head commit, ID "approval:<user id>@<head sha>": GitLab keeps no commit or time
//     per approval, so an approval stands for the head it is read on, as GitLab itself
//     treats it (a project that wants approvals to end when commits are added says so
//     in its merge request settings); approvals come last;
//   - each reviewer whose state is requested_changes → ReviewChangesRequested, ID
//     "changes:<user id>:<newest note id>" (a new round of notes is a new review), Body
//     the text of all that user's non-system notes, diff notes as "path:line: text";
//   - every other non-system note → ReviewCommented, ID "note:<note id>".
//
// Notes are read oldest first, and reviews are ordered by their time.
func (g *gitLab) Reviews(ctx context.Context, number int64) ([]Review, error) {
	notes, err := g.notes(ctx, number)
	if err != nil {
		return nil, err
	}
	reviewers, _, err := g.api.MergeRequests.GetMergeRequestReviewers(g.project, number, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err("merge request reviewers", err)
	}
	changes := map[int64]*gitlab.BasicUser{}
	for _, rv := range reviewers {
		if rv.User != nil && rv.State == "requested_changes" {
			changes[rv.User.ID] = rv.User
		}
	}
	var out []Review
	byUser := map[int64][]*gitlab.Note{}
	for _, n := range notes {
		if _, ok := changes[n.Author.ID]; ok {
			byUser[n.Author.ID] = append(byUser[n.Author.ID], n)
			continue
		}
		out = append(out, Review{
			ID: "note:" + itoa(n.ID), Author: n.Author.Username, State: ReviewCommented,
			Body: noteText(n), CommitSHA: noteCommit(n), SubmittedAt: timeOf(n.CreatedAt),
		})
	}
	for _, rv := range reviewers {
		if rv.User == nil || rv.State != "requested_changes" {
			continue
		}
		out = append(out, changesReview(rv, byUser[rv.User.ID]))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SubmittedAt.Before(out[j].SubmittedAt) })
	mr, _, err := g.api.MergeRequests.GetMergeRequest(g.project, number, nil, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err("merge request", err)
	}
	approvals, _, err := g.api.MergeRequestApprovals.GetConfiguration(g.project, number, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err("merge request approvals", err)
	}
	for _, a := range approvals.ApprovedBy {
		if a == nil || a.User == nil {
			continue
		}
		out = append(out, Review{
			ID: "approval:" + itoa(a.User.ID) + "@" + mr.SHA, Author: a.User.Username, State: ReviewApproved, CommitSHA: mr.SHA,
		})
	}
	return out, nil
}

// notes lists the merge request's non-system notes, oldest first.
func (g *gitLab) notes(ctx context.Context, number int64) ([]*gitlab.Note, error) {
	var out []*gitlab.Note
	opt := &gitlab.ListMergeRequestNotesOptions{
		ListOptions: gitlab.ListOptions{PerPage: 100},
		OrderBy:     gitlab.Ptr("created_at"),
		Sort:        gitlab.Ptr("asc"),
	}
	for {
		page, resp, err := g.api.Notes.ListMergeRequestNotes(g.project, number, opt, gitlab.WithContext(ctx))
		if err != nil {
			return nil, g.err("merge request notes", err)
		}
		for _, n := range page {
			if n != nil && !n.System {
				out = append(out, n)
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// changesReview is one reviewer's "requested changes" with their notes as its body.
func changesReview(rv *gitlab.MergeRequestReviewer, notes []*gitlab.Note) Review {
	r := Review{
		Author: rv.User.Username, State: ReviewChangesRequested,
		SubmittedAt: timeOf(rv.CreatedAt),
	}
	var newest int64
	var texts []string
	for _, n := range notes {
		texts = append(texts, noteText(n))
		if n.ID > newest {
			newest = n.ID
			r.SubmittedAt = timeOf(n.CreatedAt)
			if c := noteCommit(n); c != "" {
				r.CommitSHA = c
			}
		}
	}
	r.ID = fmt.Sprintf("changes:%d:%d", rv.User.ID, newest)
	r.Body = strings.Join(texts, "\n")
	return r
}

// noteText is a note's body; a diff note is "path:line: body".
func noteText(n *gitlab.Note) string {
	if p := n.Position; p != nil {
		path, line := p.NewPath, p.NewLine
		if line == 0 && p.OldLine > 0 {
			path, line = p.OldPath, p.OldLine
		}
		if path != "" {
			return lineComment(path, line, n.Body)
		}
	}
	return strings.TrimSpace(n.Body)
}

// noteCommit is the commit a diff note was written on.
func noteCommit(n *gitlab.Note) string {
	if n.Position != nil {
		return n.Position.HeadSHA
	}
	return n.CommitID
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
