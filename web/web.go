// Package web holds the dashboard's templ components; it has no code of its own.
//
//   - web/layout: the page frames. layout.Page(PageMeta) wraps every signed-in page
//     (navigation with inbox count, signed-in agent and logout, flash, main, footer,
//     live-update hooks); layout.Bare(PageMeta) wraps the login page.
//   - web/components: the shared pieces (state badges, buttons and CSRF POST buttons,
//     form fields with errors, flash, empty state, progress, stat tiles, timeline, log
//     blocks, live feed, definition lists, cards, tables, pagination).
//   - one folder per page, which only assembles the two above.
//
// Conventions for page authors:
//   - Every state-changing action is a form POST carrying components.CSRFField (or is a
//     components.PostButton), so every page works without JavaScript.
//   - Every interactive element has a data-testid.
//   - Never templ.Raw user data; let templ escape it.
//   - Live updates (static/live.js): set PageMeta.LiveRefresh ("task:12", "goal:3",
//     "any") and mark the parts that change with data-live-region="<key>"; on a
//     matching event the page is re-fetched with header "X-Partial: 1" and those
//     regions are swapped. A handler may answer X-Partial requests with just the
//     regions (no layout) to save work. Feeds use components.LiveFeed, running logs
//     components.LiveLog.
//   - The generated *_templ.go files are committed: run `templ generate` after editing
//     a .templ file (CI does not).
package web
