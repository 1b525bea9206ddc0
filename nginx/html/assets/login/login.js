// The login page: a pasted token is traded for the HttpOnly cookie (POST /login), then the app.
// A browser that already holds a good cookie (the redirect of GET /?token= from another site
// arrives here without it: SameSite=Strict) goes straight on to the app.

const form = document.getElementById("login");
const input = document.getElementById("token");
const message = document.getElementById("message");

function say(text) {
  message.textContent = text;
}

async function signedIn() {
  try {
    const res = await fetch("/healthz", { cache: "no-store" });
    return res.status !== 401;
  } catch {
    return false;
  }
}

async function signIn(event) {
  event.preventDefault();
  const button = form.querySelector("button");
  button.disabled = true;
  say("");
  try {
    const res = await fetch("/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: input.value.trim() }),
      cache: "no-store",
    });
    if (res.ok) {
      location.replace("/");
      return;
    }
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    say(data && data.error ? data.error : "sign-in failed (" + res.status + ")");
  } catch (e) {
    say("the server cannot be reached: " + e.message);
  } finally {
    button.disabled = false;
  }
}

form.addEventListener("submit", signIn);
if (new URLSearchParams(location.search).get("error") === "invalid_token")
  say("That token is not valid (unknown or revoked).");
signedIn().then((ok) => {
  if (ok) location.replace("/");
});
