import { runAdmin } from "./AdminCli.ts"

// The operator CLI as a process: `npm run --silent admin -- <command> [--flag value …]` prints one
// JSON object, or the reason on stderr with a non-zero exit (see AdminCli.ts).
const { code, stdout, stderr } = await runAdmin(process.argv.slice(2), process.env)
process.stdout.write(stdout)
process.stderr.write(stderr)
process.exit(code)
