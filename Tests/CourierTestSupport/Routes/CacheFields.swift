/// `cacheControl=`, `expires=` and `vary=` on any route: the response also carries `Cache-Control`, `Expires` or
/// `Vary` with that value (URL-decoded), for the URL cache's tests.
enum CacheFields {
    static func apply(_ request: ReceivedRequest, to plan: ResponsePlan) -> ResponsePlan {
        var plan = plan
        for (option, field) in [("cacheControl", "Cache-Control"), ("expires", "Expires"), ("vary", "Vary")] {
            if let value = request.queryValue(option) {
                plan.headers.replaceOrAdd(name: field, value: value)
            }
        }
        return plan
    }
}
