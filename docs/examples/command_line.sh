# Run in docs/examples/, after `pip install -e '.[gateway]'` (or ./scripts/test's .venv).
# A stdio server's command goes after `--`; an MCP server's URL or an OpenAPI document before.
amends-toolkit inspect -- python tasks_server.py
amends-toolkit inspect notes.yaml --base-url https://notes.example.com/v1
amends-toolkit call list_tasks '{}' -- python tasks_server.py
amends-toolkit call delete_tasks '{"task_id": 1}' -- python tasks_server.py 2>&1 || echo "exit status $?"
# An MCP server over HTTP, with a credential from the environment (quoted: the command reads it):
#   amends-toolkit inspect https://tasks.example.com/mcp --header 'Authorization=Bearer ${TOKEN}'
#   amends-toolkit inspect --json --schemas -- npx -y @modelcontextprotocol/server-everything
