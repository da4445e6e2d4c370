declare module 'kubewasm:reconciler/http@0.2.0' {
  /**
   * Sends one request and returns its whole response. Redirects (301, 302, 303, 307,
   * 308) are followed, at most 5, each one only within the grant; `Authorization` is
   * dropped when a redirect leaves the origin.
   */
  export function send(request: HttpRequest): HttpResponse;
  /**
   * One HTTP request.
   */
  export interface HttpRequest {
    /**
     * `GET`, `POST`, `PUT`, `PATCH`, `DELETE`, `HEAD`...
     */
    method: string,
    /**
     * An absolute `http://` or `https://` URL.
     */
    url: string,
    /**
     * Header names and values; a name may repeat.
     */
    headers: Array<[string, string]>,
    /**
     * The request body; empty for none.
     */
    body: Uint8Array,
    /**
     * The whole request's timeout in milliseconds, from sending to the last byte
     * of the response; lowered to the host's, never raised. `none`: the host's.
     */
    timeoutMs?: number,
  }
  /**
   * The response to a request: any status, 4xx and 5xx included.
   */
  export interface HttpResponse {
    status: number,
    /**
     * Header names (lower-case) and values.
     */
    headers: Array<[string, string]>,
    /**
     * The whole body (at most the host's response cap).
     */
    body: Uint8Array,
  }
  /**
   * Why a request has no response. Each message names the URL (scheme, host and port
   * only: paths and queries may hold credentials).
   */
  export type HttpError = HttpErrorDenied | HttpErrorTimeout | HttpErrorTooLarge | HttpErrorTooManyRequests | HttpErrorFailed;
  /**
   * Not allowed: the URL is outside the manifest's `outbound` or the operator's
   * grant (the message names the setting that would allow it), the name resolves
   * only to refused addresses, or a redirect leads outside the grant.
   */
  export interface HttpErrorDenied {
    tag: 'denied',
    val: string,
  }
  /**
   * No complete response within the timeout.
   */
  export interface HttpErrorTimeout {
    tag: 'timeout',
    val: string,
  }
  /**
   * The response body exceeds the host's cap.
   */
  export interface HttpErrorTooLarge {
    tag: 'too-large',
    val: string,
  }
  /**
   * The call has used up its request budget (`[http] max-requests`).
   */
  export interface HttpErrorTooManyRequests {
    tag: 'too-many-requests',
    val: string,
  }
  /**
   * Anything else: a malformed request, DNS, connection, TLS, protocol.
   */
  export interface HttpErrorFailed {
    tag: 'failed',
    val: string,
  }
}
