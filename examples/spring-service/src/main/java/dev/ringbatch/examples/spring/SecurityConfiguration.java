package dev.ringbatch.examples.spring;

import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.web.SecurityFilterChain;

/**
 * The actuator behind the {@code OPS} role: health answers anyone with its status only (a load balancer's
 * or Kubernetes' probe), and its details (ring fill, failures, the last failure's time, close reports) only
 * an authenticated operator, with {@code management.endpoint.health.show-details=when-authorized}; every
 * other endpoint ({@code batchers}, {@code prometheus}, {@code metrics}) needs the role. The events API itself
 * is left open here: authenticate it as your service does.
 */
@Configuration(proxyBeanMethods = false)
public class SecurityConfiguration {

  // tag::security[]
  @Bean
  SecurityFilterChain security(HttpSecurity http) throws Exception {
    return http
        .authorizeHttpRequests(requests -> requests
            .requestMatchers(EndpointRequest.to(HealthEndpoint.class)).permitAll() // details: when-authorized
            .requestMatchers(EndpointRequest.toAnyEndpoint()).hasRole("OPS")
            .anyRequest().permitAll()) // the events API: secure it as your service does
        .httpBasic(Customizer.withDefaults())
        // No browser session to ride on: every call carries its credentials, so CSRF tokens add nothing.
        .sessionManagement(session -> session.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
        .csrf(csrf -> csrf.disable())
        .build();
  }
  // end::security[]
}
