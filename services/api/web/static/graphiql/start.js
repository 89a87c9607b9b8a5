// GraphiQL against this API. A plain script, not a module: React and GraphiQL arrive as
// browser globals from the vendored files loaded before it.
(function () {
  "use strict";

  // The web UI keeps the user's token under this key (static/js/api.js); reusing it means
  // someone signed in there can query here at once.
  const TOKEN_KEY = "benchstack.token";
  const token = localStorage.getItem(TOKEN_KEY) || "";
  const authorization = token ? { Authorization: "Bearer " + token } : null;

  const endpoint = window.location.origin + window.location.pathname;
  const socket = new URL(endpoint);
  socket.protocol = socket.protocol === "https:" ? "wss:" : "ws:";

  const fetcher = GraphiQL.createFetcher({
    url: endpoint,
    subscriptionUrl: socket.toString(),
    // Browsers cannot set headers on a websocket; the API reads the token from here instead.
    wsConnectionParams: authorization || {},
  });

  const DEFAULT_QUERY = [
    "# benchstack's GraphQL API. Every operation needs",
    "# a token:  benchstack token create --user NAME",
    "# Put it in the Headers tab below, or save it in",
    "# the web UI at / and reload this page.",
    "# Ctrl-Enter runs the query; Ctrl-Space completes.",
    "{",
    "  __typename",
    "}",
    "",
  ].join("\n");

  const props = {
    fetcher: fetcher,
    defaultQuery: DEFAULT_QUERY,
    isHeadersEditorEnabled: true,
    // The token is a secret: kept only where the web UI keeps it, not copied elsewhere.
    shouldPersistHeaders: false,
    defaultEditorToolsVisibility: authorization ? false : "headers",
  };
  if (authorization) {
    props.headers = JSON.stringify(authorization, null, 2);
  } else {
    props.defaultHeaders = JSON.stringify({ Authorization: "Bearer <your token>" }, null, 2);
  }

  const root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(React.createElement(GraphiQL, props));
})();
