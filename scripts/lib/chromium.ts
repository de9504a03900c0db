// Launching Debian's Chromium (scripts/install-test-tools.sh, run by `npm test`, installs it when
// missing) for the browser tests, through playwright-core: headless, sandbox off (containers), and no
// traffic of its own.
import { type Browser, chromium } from 'playwright-core'

/** Debian's chromium package. Without it the browser tests fail. */
const CHROMIUM = '/usr/bin/chromium'

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** A headless Chromium; close it when done. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
}
