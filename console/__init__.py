"""The operators' and analysts' console: server-rendered pages under /console on the API (Jinja2 templates in
console/templates/, SVG charts drawn here, no script fetched at run time). Pages read through the API's own route
functions and read-side queries, under the caller's key and the privacy policy; actions go through the API's
route functions too (retry, skip, rebuild, supersede, feedback, policy)."""
